"""`python -m kube_rdma_cli ...`: the `kube-rdma` command without the console script."""

import sys

from kube_rdma_cli.dispatch import main

sys.exit(main())
