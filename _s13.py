import time, sys
import scheduler_core as sc
from collections import Counter
t=time.perf_counter()
spec=sc.get_preset("s13-fleet-reliability").spec()
print("parse", time.perf_counter()-t)
for name in sc.variant_names(spec)[:int(sys.argv[1]) if len(sys.argv)>1 else 3]:
    t=time.perf_counter()
    r=sc.simulate(spec,name)
    w=r.workloads[0]
    c=Counter(e.reason for e in r.events)
    print(name, round(time.perf_counter()-t,2), "disruptions", w.disruptions, "lost", round(w.lost_work/16000/3600,1),"h",
          "useful", round(w.useful_work/16000/86400,2), "d", "nodelost", c["NodeLost"], "events", len(r.events))
    print("  ettr", r.summary["ettr"], w.ettr, "goodput", r.summary["goodput"])
