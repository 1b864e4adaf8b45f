#!/usr/bin/env python3
"""Compares a method-1 JSON report with its method-2 regeneration: per ladder, the
qualification and its reasons; per metric and arm, the estimate, interval and verdict."""
import json, sys

def ladders(path):
    d = json.load(open(path))
    return {(l.get('ladder'), l.get('tag')): l for l in d['ladders']}

def arms(l):
    out = {}
    for m in l.get('metrics', []):
        for a in m.get('arms', []):
            out[(m['column'], a['arm'])] = a
    return out

def fmt(a):
    if a is None:
        return 'n/a'
    return f"{a['estimate_pct']:+.3f} [{a['ci_low_pct']:+.3f}, {a['ci_high_pct']:+.3f}] {a['verdict']}"

def qual(l):
    return 'qualified' if l.get('qualified') else 'DISQUALIFIED by ' + ', '.join(r for r in l.get('disqualified_by', []))

old, new, title = sys.argv[1], sys.argv[2], sys.argv[3]
o, n = ladders(old), ladders(new)
print(f"### {title}\n")
print("| ladder / tag | method 1 | method 2 |\n|---|---|---|")
for key in n:
    print(f"| `{key[0]}` / `{key[1]}` | {qual(o[key]) if key in o else 'n/a'} | {qual(n[key])} |")
rows = []
for key in n:
    oa, na = arms(o.get(key, {})), arms(n[key])
    for q in na:
        before, after = oa.get(q), na[q]
        changed = before is None or before['verdict'] != after['verdict']
        rows.append((key, q, before, after, changed))
print("\n| ladder / tag | metric | arm | method 1 (median [interval] verdict) | method 2 (geometric mean [interval] verdict) | verdict changed |\n|---|---|---|---|---|---|")
for key, q, b, a, c in rows:
    print(f"| `{key[1]}` | `{q[0]}` | `{q[1]}` | {fmt(b)} | {fmt(a)} | {'**yes**' if c else 'no'} |")
print()
