"""Test and bench tooling, never installed and never imported by the product: an in-memory
apiserver (`fakeapi`), realistic cluster generators (`clustergen`), fixture builders (`builders`)
and loopback helpers (`net`, `wait`)."""
