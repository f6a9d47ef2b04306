"""`cronpilot demo`: the example jobs against the endpoint simulator, on a throwaway database."""
