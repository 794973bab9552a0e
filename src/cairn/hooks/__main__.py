import sys

from cairn.hooks.run import main

sys.exit(main())
