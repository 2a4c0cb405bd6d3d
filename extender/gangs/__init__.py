"""Gang placement: which pods form a gang (`identity`), where the whole gang goes (`choose`, pure),
the plans kept until their members bind (`planner`), what the plans hold (`reservations`), and the
bind barrier that binds all members together or none (`barrier`)."""
