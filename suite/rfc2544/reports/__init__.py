"""Reports from a results.json: HTML and PDF (`rfc2544 report`) and the
comparison of two runs (`rfc2544 compare`).

`write_reports(results_path, out_dir, formats)` is what `rfc2544 run` calls
at the end of a run; it lives in `rfc2544.reports.render`.
"""
