#!/usr/bin/env python3
"""Token streams of the shapes issue 21 names, for reprise-autotrace-sim:
  python3 tools/autotrace_sim/stream_shapes.py SHAPE | build/bin/reprise-autotrace-sim
SHAPE: jacobi (paper Fig. 1, roles alternating with period 2), period3, two_phase,
three_phase (phases after blocking ops), blocking10 (a blocking check every 10 iterations),
handoff (every iteration, then every tenth), nested (CFD-like 50 sweeps per step), noise.
The same shapes are unit tests in tests/unit/test_autotrace_quality.cpp."""
import random, sys
def jac(n=1000):  # fig-1 Jacobi: 3 ops, x alternates between 2 regions
    out=[]
    for i in range(n): r=i%2; out+= [f's{r}',f'd{r}',f'u{r}']
    return out
def period3(n=1000):
    out=[]
    for i in range(n): r=i%3; out+= [f'a{r}',f'b{r}',f'c',f'd{r}']
    return out
def two_phase():
    body1=[f'p{i}' for i in range(25)]; body2=[f'q{i}' for i in range(35)]
    return body1*200+['!']+body2*200
def three_phase():
    b1=[f'p{i}' for i in range(7)]; b2=[f'q{i}' for i in range(11)]; b3=[f'r{i}' for i in range(5)]
    return b1*300+['!']+b2*300+['!']+b3*300
def blocking(k=10, n=1000):
    out=[]
    for i in range(n):
        out += ['x','y','z','w']
        if i%k==k-1: out.append('!')
    return out
def handoff(n=1000):  # hand-off every iteration then every 10
    out=[]
    for i in range(n):
        out += ['a','b','c','d','e']
        if i<300 or i%10==9: out.append('h')
    return out
def nested(steps=40):  # CFD-like: per step 6 ops, then 50 Poisson sweeps of 3 ops, then 4 ops
    out=[]
    for s in range(steps):
        out += ['f1','f2','f3','f4','f5','f6']
        for j in range(50): out += ['p1','p2','p3']
        out += ['g1','g2','g3','g4']
    return out
def noise(n=3000, seed=1):
    r=random.Random(seed)
    return [f't{r.randrange(20)}' for _ in range(n)]
shapes={'jacobi':jac,'period3':period3,'two_phase':two_phase,'three_phase':three_phase,'blocking10':blocking,'handoff':handoff,'nested':nested,'noise':noise}
name=sys.argv[1]
print(' '.join(shapes[name]()))
