"""CUDA-graph timing of one call for the debug scripts (bench/dbg/bal_merge.py, wide_merge.py): no sys.path changes."""
import statistics

import torch


def graph_us(fn, dev, reps: int = 20) -> float:
    """One call of ``fn`` by CUDA-graph replay on ``dev``: ``reps`` captured calls, best of 3 medians of 5 replays."""
    st = torch.cuda.Stream(dev)
    st.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(st):
        fn()
    torch.cuda.current_stream(dev).wait_stream(st)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    g.replay()
    torch.cuda.synchronize(dev)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    best = []
    for _ in range(3):
        ts = []
        for _ in range(5):
            ev[0].record()
            g.replay()
            ev[1].record()
            ev[1].synchronize()
            ts.append(ev[0].elapsed_time(ev[1]) * 1e3 / reps)
        best.append(statistics.median(ts))
    return min(best)
