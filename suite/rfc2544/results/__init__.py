"""What a run found: the typed results model (records, summaries,
deviations), the results file and its reader, the store and its trend."""
