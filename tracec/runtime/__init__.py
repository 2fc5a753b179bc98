"""Runtime for compiled capability environments: world helpers, tool-call parsing, the env base."""
