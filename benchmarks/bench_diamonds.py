"""TabFormerRegressor on the real diamonds table (log price), next to HistGradientBoosting.

    python benchmarks/bench_diamonds.py

Fixed 75/25 split (seed 0), max_epochs=10 to keep it a few minutes on 2 CPU cores.
"""

import time

from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import mean_squared_error, r2_score
from sklearn.model_selection import train_test_split

from tabformer import TabFormerRegressor
from tabformer.datasets import load_diamonds

X, y = load_diamonds()
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
t = time.time()
reg = TabFormerRegressor(random_state=0, max_epochs=10, verbose=0).fit(Xtr, ytr)
s = time.time() - t
p = reg.predict(Xte)
print(
    f"tabformer max_epochs=10: R2 {r2_score(yte, p):.4f} RMSE(log price) {mean_squared_error(yte, p) ** 0.5:.4f} fit_s {s:.0f}",
    flush=True,
)
Xc = Xtr.astype({c: "category" for c in ["cut", "color", "clarity"]})
Xtc = Xte.astype({c: "category" for c in ["cut", "color", "clarity"]})
t = time.time()
h = HistGradientBoostingRegressor(categorical_features="from_dtype", random_state=0).fit(Xc, ytr)
s = time.time() - t
p = h.predict(Xtc)
print(
    f"HistGradientBoosting: R2 {r2_score(yte, p):.4f} RMSE(log price) {mean_squared_error(yte, p) ** 0.5:.4f} fit_s {s:.1f}",
    flush=True,
)
