"""The operator console (Textual). Build it with :func:`tui.app.make_app`; run it with
:func:`tui.app.run_console` (this terminal) or :func:`tui.app.run_console_served`
(a browser, through textual-serve). It imports ``core`` only, and calls the use cases
of :class:`core.cases.Herald` for everything it reads or changes."""
