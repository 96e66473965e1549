"""Rendering: plans, reports and findings as rich renderables or plain text.

Takes data, returns renderables or strings; never prints and never fetches anything. The one
place Consoles are built is `kreplica.render.console.make_console`.
"""

from __future__ import annotations
