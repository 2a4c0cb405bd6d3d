"""The network levels gangs are placed in: which node labels name a cluster's fabric tiers and
NVLink domains (each cluster's own vocabulary), and what each job asks of them."""
