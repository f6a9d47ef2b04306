"""Read use cases ("queries"): what the API and the CLI show, each read in one read-only unit
(`ReadingFactory`, one snapshot) and returned as plain domain objects. One module per area."""
