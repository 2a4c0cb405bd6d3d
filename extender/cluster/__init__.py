"""The extender's model of the cluster (`model`) and where it comes from (`source`): the live
cluster through list and watch (`live`), or a snapshot file (`snapshot`)."""
