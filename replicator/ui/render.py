"""The Replication page as HTML (pure): Jinja2 with autoescape, inline CSS and SVG, no script."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from functools import cache
from urllib.parse import urlencode

from jinja2 import DictLoader, Environment, Template, select_autoescape
from markupsafe import Markup

from replicator.ui.chart import svg_chart, svg_lag_chart, svg_line_chart
from replicator.ui.page import LagSeries, ReplicationPage, Series, format_seconds, format_time

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Replication · MirrorFlow</title>
<style>
body{font-family:system-ui,sans-serif;margin:16px;color:#1f2937}
h1{font-size:20px;margin:0 0 8px} h2{font-size:16px;margin:20px 0 6px} h3{font-size:14px;margin:10px 0 4px}
table{border-collapse:collapse;font-size:13px;margin-bottom:8px} th,td{border:1px solid #d1d5db;padding:3px 6px;text-align:left}
th{background:#f3f4f6} td.num{text-align:right;font-variant-numeric:tabular-nums}
.nav a{margin-right:10px} .nav a.on{font-weight:bold;text-decoration:none;color:#111}
.missing,.breached,.failed{color:#b91c1c;font-weight:bold} .ok,.clean,.done{color:#15803d}
.box{display:inline-block;border:1px solid #d1d5db;border-radius:6px;padding:6px 10px;margin-right:8px}
.muted{color:#6b7280}
</style></head><body>
<h1>Replication</h1>
{% if not page.routes %}
<p class="muted">The state database holds no route yet: run <code>mirrorflow db upgrade</code>,
a worker or an audit first.</p>
{% else %}
<section id="overview"><h2>All routes</h2>
<table><tr><th>route</th><th>state</th><th>lag (records)</th><th>SLA</th><th>latest audit</th></tr>
{% for o in page.overview %}<tr><td><a href="?{{ link(route=o.route) }}">{{ o.route }}</a></td>
<td class="{{ 'failed' if o.held_by_run is not none or o.states else 'ok' }}">{{ o.state }}</td>
<td class="num {{ 'breached' if o.lag and o.lag.breached }}">{{ '' if not o.lag else (o.lag.records if o.lag.records is not none else 'unknown') }}</td>
<td class="{{ 'breached' if o.breached else ('ok' if o.sla_checked else 'muted') }}">{{ ('breached: ' ~ o.breached|join(', ')) if o.breached else ('ok' if o.sla_checked else 'not checked') }}</td>
<td>{% if o.audit %}<span class="{{ o.audit.status }}">{{ o.audit.status }}</span> <span class="muted">{{ t(o.audit.finished_at) }}</span>{% else %}<span class="muted">never</span>{% endif %}</td></tr>{% endfor %}
</table></section>
<p class="nav">Route: {% for r in page.routes %}<a href="?{{ link(route=r) }}" class="{{ 'on' if r == page.route }}">{{ r }}</a>{% endfor %}</p>
{% if page.topics %}<p class="nav">Topic: <a href="?{{ link(route=page.route) }}" class="{{ 'on' if page.topic is none }}">all</a>
{% for t in page.topics %}<a href="?{{ link(route=page.route, topic=t) }}" class="{{ 'on' if t == page.topic }}">{{ t }}</a>{% endfor %}</p>{% endif %}

{% if page.held_by %}<p class="box failed" id="failed-over">Route {{ page.route }} is failed over to
{{ page.held_by.target_cluster }} (failover run {{ page.held_by.id }}, route stopped {{ t(page.held_by.route_stopped_at) }},
run {{ page.held_by.status }}): its workers are refused until a failback, or after a drill
<code>mirrorflow failover --route {{ page.route }} --release</code>.</p>{% endif %}
<section id="lag"><h2>Current lag</h2>
{% if page.lag %}<div class="box"><span class="{{ 'breached' if page.lag.breached else 'ok' }}">
{{ page.lag.records if page.lag.records is not none else 'unknown' }}</span> records not yet copied
<span class="muted">(measured {{ t(page.lag.measured_at) }}; {{ page.lag.note }})</span></div>
{% else %}<p class="muted">Not measured yet (the DAG mirrorflow_replication_sla measures it every minute).</p>{% endif %}
{% if page.rates or page.latencies %}<h3>Throughput and latency over time</h3>
{% if page.rates %}{{ line_chart(page.route, page.rates, "records copied per second over time", "records per second", "records/s") }}{% endif %}
{% if page.latencies %}{{ line_chart(page.route, page.latencies, "replication latency over time (newest heartbeat's age)", "latency (ms)", "ms") }}{% endif %}
{% endif %}
{% if page.lag_series %}<h3>Lag over time, per topic</h3>
{% for s in page.lag_series %}<h3>{{ s.topic }}</h3>{{ lag_chart(s) }}{% endfor %}{% endif %}
</section>

<section id="topics"><h2>Paused and failed-over topics</h2>
{% if page.held_topics %}<table id="held-topics"><tr><th>topic</th><th>state</th><th>since</th></tr>
{% for h in page.held_topics %}<tr><td>{{ h.topic }}</td><td class="failed">{{ 'PAUSED' if h.desired_state == 'paused' else 'FAILED_OVER' }}</td><td>{{ t(h.updated_at) }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">None: the route copies every topic it selects.</p>{% endif %}
<p class="muted">Pause or resume a topic: trigger the DAG <a href="/dags/mirrorflow_topic_pause" target="_top">mirrorflow_topic_pause</a>
(route, topic, action); the workers follow within 5 s, without a rebalance.</p>
</section>

{% if page.workers is not none %}<section id="workers"><h2>Workers</h2>
{% if page.workers %}<table><tr><th>worker</th><th>partitions</th><th>count</th><th>since</th></tr>
{% for w in page.workers %}<tr><td>{{ w.worker }}</td><td>{{ w.partitions }}</td><td class="num">{{ w.count }}</td><td>{{ t(w.since) }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">No worker of this route is running.</p>{% endif %}
</section>{% endif %}

<section id="sla"><h2>SLA</h2>
{% if page.sla_states %}<table><tr><th>check</th><th>state</th><th>since</th><th>latest finding</th><th>checked</th></tr>
{% for s in page.sla_states %}<tr><td>{{ s.check }}</td><td class="{{ s.state }}">{{ s.state }}</td><td>{{ t(s.since) }}</td><td>{{ s.detail }}</td><td>{{ t(s.checked_at) }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">No SLA check ran for this route.</p>{% endif %}
<h3>Breaches and recoveries</h3>
{% if page.sla_events %}<table><tr><th>at</th><th>check</th><th>event</th><th>detail</th><th>alert sent</th></tr>
{% for e in page.sla_events %}<tr><td>{{ t(e.at) }}</td><td>{{ e.check }}</td><td class="{{ 'breached' if e.kind == 'breach' else 'ok' }}">{{ e.kind }}</td><td>{{ e.detail }}</td>
<td>{{ t(e.notified_at) if e.notified_at else ('failed: ' ~ e.notify_error if e.notify_error else 'pending') }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">None.</p>{% endif %}
</section>

<section id="audits"><h2>Audits</h2>
{% for s in page.series %}<h3>{{ s.topic }}{% if s.missing %} <span class="missing">({{ s.missing }} missing)</span>{% endif %}</h3>
{{ chart(s) }}{% else %}<p class="muted">No audited bucket yet.</p>{% endfor %}
{% if page.audit_runs %}<h3>Runs</h3><table><tr><th>run</th><th>status</th><th>window</th><th>source</th><th>target</th><th>pending</th><th>missing</th><th>duplicates</th><th>extra</th><th>finished</th></tr>
{% for a in page.audit_runs %}<tr><td>{{ a.run_key }}</td><td class="{{ a.status }}">{{ a.status }}</td><td>{{ t(a.window_start) }} .. {{ t(a.window_end) }}</td>
<td class="num">{{ a.source_records }}</td><td class="num">{{ a.target_records }}</td><td class="num">{{ a.pending }}</td><td class="num">{{ a.missing }}</td><td class="num">{{ a.duplicates }}</td><td class="num">{{ a.extra }}</td><td>{{ t(a.finished_at) }}</td></tr>{% endfor %}
</table>{% endif %}
<h3>Findings</h3>
{% if page.findings %}<table id="findings"><tr><th>bucket</th><th>topic</th><th>replica</th><th>partition</th><th>status</th><th>source</th><th>target</th><th>missing offsets</th><th>duplicate offsets</th><th>extra offsets (target)</th><th>run</th></tr>
{% for f in page.findings %}<tr><td>{{ t(f.bucket_start) }}</td><td>{{ f.topic }}</td><td>{{ f.target_topic }}</td><td class="num">{{ f.partition }}</td><td class="{{ f.status }}">{{ f.status }}</td>
<td class="num">{{ f.source_count }}</td><td class="num">{{ f.target_count }}</td><td>{{ f.missing_offsets or '' }}</td><td>{{ f.duplicate_offsets or '' }}</td><td>{{ f.extra_offsets or '' }}</td><td>{{ f.run_key }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">None: every audited bucket is clean.</p>{% endif %}
</section>

<section id="failovers"><h2>Failovers</h2>
{% if page.failovers %}<table id="failover-runs"><tr><th>run</th><th>to</th><th>mode</th><th>status</th><th>stopped at step</th><th>RPO (records)</th><th>RTO</th><th>triggered</th><th>finished</th><th>released</th></tr>
{% for f in page.failovers %}<tr><td class="num">{{ f.id }}</td><td>{{ f.target_cluster }}</td><td>{{ f.mode }}</td><td class="{{ f.status }}">{{ f.status }}</td><td>{{ f.stopped_at_step or '' }}</td>
<td class="num">{{ f.rpo_records if f.rpo_records is not none else '' }}{% if f.rpo_basis %} <span class="muted">({{ f.rpo_basis }})</span>{% endif %}</td><td>{{ secs(f.rto_seconds) }}</td><td>{{ t(f.triggered_at) }}</td><td>{{ t(f.finished_at) }}</td><td>{{ t(f.released_at) }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">None.</p>{% endif %}
{% if page.failbacks is not none %}<h2>Failbacks</h2>
{% if page.failbacks %}<table id="failbacks"><tr><th>run</th><th>mode</th><th>status</th><th>stopped at step</th><th>RTO</th><th>records copied back</th><th>never replicated</th><th>not copied</th><th>started</th><th>finished</th><th>error</th></tr>
{% for f in page.failbacks %}<tr><td class="num">{{ f.id }}</td><td>{{ f.mode }}</td><td class="{{ f.status }}">{{ f.status }}</td><td>{{ f.stopped_at_step or '' }}</td><td>{{ secs(f.rto_seconds) }}</td><td class="num">{{ f.copied }}</td><td class="num">{{ f.unreplicated }}</td><td class="num">{{ '' if f.not_copied is none else f.not_copied }}</td><td>{{ t(f.started_at) }}</td><td>{{ t(f.finished_at) }}</td><td>{{ f.error or '' }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">None.</p>{% endif %}{% endif %}
{% if page.backfills is not none %}<h2>Backfills</h2>
{% if page.backfills %}<table id="backfills"><tr><th>run</th><th>topic</th><th>replica</th><th>by</th><th>status</th><th>source offsets (partition: from-to)</th><th>written</th><th>total</th><th>overlap allowed</th><th>started</th><th>finished</th><th>error</th></tr>
{% for b in page.backfills %}<tr><td>{{ b.run_key }}</td><td>{{ b.topic }}</td><td>{{ b.target_topic }}</td><td>{{ b.mode }}</td><td class="{{ b.status }}">{{ b.status }}</td><td>{{ b.offsets }}</td><td class="num">{{ '' if b.written is none else b.written }}</td><td class="num">{{ b.total }}</td><td>{{ 'yes' if b.overlap_ok else '' }}</td><td>{{ t(b.started_at) }}</td><td>{{ t(b.finished_at) }}</td><td>{{ b.error or '' }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">None.</p>{% endif %}{% endif %}
</section>

<section id="sync"><h2>Latest sync</h2>
{% if page.last_sync %}{% set y = page.last_sync %}<p>Run {{ y.run_id }} ({{ y.step }}): <span class="{{ y.status }}">{{ y.status }}</span>
<span class="muted">{{ t(y.started_at) }} .. {{ t(y.finished_at) }}</span>{% if y.notes %} <span class="muted">{{ y.notes }}</span>{% endif %}</p>
{% if y.changes %}<table id="sync-changes"><tr><th>change</th><th>resource</th><th>old -> new</th><th>outcome</th><th>error</th></tr>
{% for c in y.changes %}<tr><td>{{ c.kind }}</td><td>{{ c.resource }}</td><td>{{ c.detail }}</td><td class="{{ 'failed' if c.error else 'ok' }}">{{ c.outcome }}</td><td>{{ c.error or '' }}</td></tr>{% endfor %}
</table>{% else %}<p class="muted">It changed nothing: the target's topics, configs and ACLs matched.</p>{% endif %}
{% else %}<p class="muted">No sync ran for this route (<code>mirrorflow sync --route {{ page.route }}</code>, or the DAG mirrorflow_metadata_sync).</p>{% endif %}
</section>

<section id="checkpoints"><h2>Latest checkpoints</h2>
{% if page.checkpoints %}<table id="checkpoints-table"><tr><th>group</th><th>topic</th><th>partition</th><th>source offset</th><th>lag on source</th><th>replica</th><th>target offset</th><th>lag on target</th><th>status</th><th>may repeat</th><th>taken</th></tr>
{% for c in page.checkpoints %}<tr><td>{{ c.group_id }}</td><td>{{ c.topic }}</td><td class="num">{{ c.partition }}</td><td class="num">{{ c.source_offset }}</td><td class="num">{{ '' if c.source_lag is none else c.source_lag }}</td><td>{{ c.target_topic }}</td><td class="num">{{ c.target_offset }}</td><td class="num">{{ '' if c.target_lag is none else c.target_lag }}</td><td>{{ c.status }}</td><td class="num">{{ c.max_repeats }}</td><td>{{ t(c.checkpointed_at) }}</td></tr>{% endfor %}
</table><p class="muted">Lag on target: the records of the replica the group would read if it moved now
(the replica's end, as the checkpoint run read it, minus where it would resume).</p>{% else %}<p class="muted">None.</p>{% endif %}
</section>
{% endif %}
</body></html>
"""


@cache
def _template() -> Template:
    env = Environment(loader=DictLoader({"page.html": _PAGE}), autoescape=select_autoescape(default=True))
    return env.get_template("page.html")


def _link(**params: str | None) -> str:
    return urlencode({k: v for k, v in params.items() if v is not None})


def _chart(series: Series) -> Markup:
    return Markup(svg_chart(series))  # svg_chart escapes every text it writes


def _lag_chart(series: LagSeries) -> Markup:
    return Markup(svg_lag_chart(series))  # svg_lag_chart escapes every text it writes


def _line_chart(name: str, points: Sequence[tuple[dt.datetime, int]], title: str, what: str, unit: str) -> Markup:
    return Markup(svg_line_chart(name, points, title, what, unit))  # it escapes every text it writes


def render_page(page: ReplicationPage) -> str:
    """The whole HTML document of ``page``; every value from the database is escaped."""
    return _template().render(page=page, link=_link, chart=_chart, lag_chart=_lag_chart, line_chart=_line_chart, t=format_time,
                              secs=format_seconds)


def render_error(message: str) -> str:
    """A minimal page saying why the data cannot be shown (escaped)."""
    from html import escape

    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Replication · MirrorFlow</title>'
            f"</head><body><h1>Replication</h1><p>{escape(message)}</p></body></html>")
