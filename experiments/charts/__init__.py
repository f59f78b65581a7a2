"""Chart builders: pure functions from stored results to Plotly figures.

Nothing here reads the database or a request. Every builder takes plain rows (the
``summary`` of each replication, per-workload records, event rows with the attributes of
``scheduler_core.events.Event``) and returns a ``plotly.graph_objects.Figure``, so each
one is unit-tested on its output without a browser. The run and compare pages turn the
figures into JSON and draw them with the app's own plotly.js bundle (scatter, bar and
heatmap traces only: ``style.BUNDLED_TRACES``).

Big runs are reduced here, on the server, before anything reaches the page: pod spans
are binned per node group and time slice, lines are thinned to a bounded number of
points, curves of the same shape are drawn once, and markers are binned so an SVG
figure never carries more than a few thousand of them.
"""
