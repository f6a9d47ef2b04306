"""The one web server that holds two front ends, the API (`adapters.api`) and the console
(`adapters.console`): what both share (the context every route is handed, problem documents,
the query's rules, paging) and the app that serves them together. Neither front end imports
the other."""
