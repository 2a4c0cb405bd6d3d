"""The mutating admission webhook that makes opted-in training pods RDMA-ready."""
