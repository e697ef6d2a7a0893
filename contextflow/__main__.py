import sys

from contextflow.adapters.cli import main

sys.exit(main())
