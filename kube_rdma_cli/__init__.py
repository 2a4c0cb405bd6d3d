"""The one command line: every part's subcommands under `kube-rdma` (also `kubectl-rdma`).

The top floor: `dispatch` builds the parser from each part's register() and runs the chosen
subcommand, `validate` checks an admin's config file offline with the parts' own parsers, and
`cli_errors` turns a failure into one line and an exit status. Nothing below imports it.
"""
