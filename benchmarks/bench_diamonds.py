"""TabFormerRegressor on the real diamonds table (log price), next to HistGradientBoosting.

    python benchmarks/bench_diamonds.py

Fixed 75/25 split (seed 0), max_epochs=10 to keep it a few minutes on 2 CPU cores.
"""
import time
import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.metrics import r2_score, mean_squared_error
from sklearn.ensemble import HistGradientBoostingRegressor
from tabformer import TabFormerRegressor
from tabformer.datasets import load_diamonds
X, y = load_diamonds()
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
t = time.time(); reg = TabFormerRegressor(random_state=0, max_epochs=10, verbose=0).fit(Xtr, ytr); s = time.time() - t
p = reg.predict(Xte)
print("tabformer max_epochs=10: R2 %.4f RMSE(log price) %.4f fit_s %.0f" % (r2_score(yte, p), mean_squared_error(yte, p) ** 0.5, s), flush=True)
Xc = Xtr.astype({c: "category" for c in ["cut", "color", "clarity"]}); Xtc = Xte.astype({c: "category" for c in ["cut", "color", "clarity"]})
t = time.time(); h = HistGradientBoostingRegressor(categorical_features="from_dtype", random_state=0).fit(Xc, ytr); s = time.time() - t
p = h.predict(Xtc)
print("HistGradientBoosting: R2 %.4f RMSE(log price) %.4f fit_s %.1f" % (r2_score(yte, p), mean_squared_error(yte, p) ** 0.5, s), flush=True)
