"""Outgoing HTTP: the aiohttp dispatcher (`dispatcher`) and the guard that keeps it off private
networks (`guard`). Nothing is imported here: the guard is wanted without aiohttp (the CLI
checks URLs in a jobs file; importing aiohttp would cost every command a tenth of a second)."""
