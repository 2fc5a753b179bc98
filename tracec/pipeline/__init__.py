"""``tracec run``: the whole TRACE loop from one config, resumable, with a report."""
