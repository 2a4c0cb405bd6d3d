"""`python -m testbed.fakeapi`: see `testbed.fakeapi.process`."""

from testbed.fakeapi.process import main

raise SystemExit(main())
