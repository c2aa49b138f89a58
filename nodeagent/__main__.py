import sys

from nodeagent.main import main

sys.exit(main())
