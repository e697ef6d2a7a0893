"""`contextflow ui`: a local web page to see and curate memory (server.py, api.py, live.py, graphview.py,
and the page itself in static/). Every read and write goes through the operations table."""
