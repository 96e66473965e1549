from __future__ import annotations

from kreplica.cli import main

main()
