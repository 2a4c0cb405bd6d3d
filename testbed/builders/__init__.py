"""Realistic objects for tests and benches: Nodes with topology documents, the pods training
controllers create, and sysfs trees shaped like real servers'."""
