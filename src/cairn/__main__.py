import sys

from cairn.cli.main import main

sys.exit(main())
