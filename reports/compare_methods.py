#!/usr/bin/env python3
"""Compares a study's committed JSON report with its regeneration under a newer method: per
ladder the qualification and its reasons; per metric and arm the verdicts that changed; per
control its reading; per metric the order tests. Prints markdown.

    python3 reports/compare_methods.py OLD.json NEW.json TITLE [OLD_LABEL NEW_LABEL]
"""
import json, sys

def ladders(path):
    d = json.load(open(path))
    return {(l.get('ladder'), l.get('tag')): l for l in d['ladders']}

def by_metric(l, key, name):
    out = {}
    for m in l.get('metrics', []):
        for x in m.get(key, []):
            out[(m['column'], x[name])] = x
    return out

def qual(l):
    if l is None:
        return 'n/a'
    return 'qualified' if l.get('qualified') else 'DISQUALIFIED by ' + ', '.join(l.get('disqualified_by', []))

def interval(x):
    return f"{x['estimate_pct']:+.3f} [{x['ci_low_pct']:+.3f}, {x['ci_high_pct']:+.3f}]"

def control(c):
    if c is None:
        return 'n/a'
    holds = {True: 'holds', False: 'does not hold', None: 'cost'}[c.get('holds')]
    rule = c.get('rule', 'contains 0' if c.get('holds') is not None else '')
    return f"{interval(c)} at {c['level']:.4f}: {holds} ({rule})".replace(' ()', '')

def order(m):
    e = m.get('order_effects', {})
    p = lambda v: 'n/a' if v is None else f"{v:.3f}"
    return f"position p {p(e.get('position_p'))}, carry-over p {p(e.get('carry_over_p'))}"

old, new, title = sys.argv[1:4]
old_label, new_label = (sys.argv[4:6] if len(sys.argv) > 5 else ('before', 'after'))
o, n = ladders(old), ladders(new)
print(f"### {title}\n")
print(f"| ladder / tag | {old_label} | {new_label} |\n|---|---|---|")
for key in n:
    print(f"| `{key[0]}` / `{key[1]}` | {qual(o.get(key))} | {qual(n[key])} |")
verdicts, controls, orders = [], [], []
for key in n:
    ol, nl = o.get(key, {}), n[key]
    oa, na = by_metric(ol, 'arms', 'arm'), by_metric(nl, 'arms', 'arm')
    for q, a in na.items():
        b = oa.get(q)
        if b is None or (b['verdict'], b['holm_verdict']) != (a['verdict'], a['holm_verdict']):
            before = 'n/a' if b is None else f"{b['verdict']} / Holm {b['holm_verdict']}"
            verdicts.append(f"| `{key[1]}` | `{q[0]}` | `{q[1]}` | {interval(a)} | {before} | {a['verdict']} / Holm {a['holm_verdict']} |")
    oc, nc = by_metric(ol, 'controls', 'arm'), by_metric(nl, 'controls', 'arm')
    for q, c in nc.items():
        b = oc.get(q)
        if b is None or b.get("holds") != c.get("holds"):
            controls.append(f"| `{key[1]}` | `{q[0]}` | `{q[1]}` | {control(b)} | {control(c)} |")
    om = {m['column']: m for m in ol.get('metrics', [])}
    for m in nl.get('metrics', []):
        b = om.get(m['column'])
        if b is not None and order(b) != order(m):
            orders.append(f"| `{key[1]}` | `{m['column']}` | {order(b)} | {order(m)} |")
if verdicts:
    print(f"\nVerdicts that changed:\n\n| tag | metric | arm | estimate [95 % interval] | {old_label} | {new_label} |\n|---|---|---|---|---|---|")
    print('\n'.join(verdicts))
if controls:
    print(f"\nControls read differently:\n\n| tag | metric | control | {old_label} | {new_label} |\n|---|---|---|---|---|")
    print('\n'.join(controls))
if orders:
    print(f"\nOrder tests that changed:\n\n| tag | metric | {old_label} | {new_label} |\n|---|---|---|---|")
    print('\n'.join(orders))
if not (verdicts or controls or orders):
    print(f"\nNo verdict, control or order test changed.")
print()
