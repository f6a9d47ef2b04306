"""The admin CLI (`cronpilot …`): one module per command group, wired in `main`."""
