from scheduler_core.cli import main

raise SystemExit(main())
