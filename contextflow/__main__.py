import sys

from contextflow.cli import main

sys.exit(main())
