import sys

from cairn.entry import main

sys.exit(main())
