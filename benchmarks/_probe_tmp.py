import time, sys, warnings
from common import data_home, sent2features
from skcrf.datasets import load_conll2002, load_conll2000
from skcrf.metrics import span_f1_score
from skcrf import CRFClassifier, SequenceVectorizer
corpus = sys.argv[1]
if corpus == "conll2002":
    Xtr, ytr = load_conll2002("train", data_home=data_home()); Xte, yte = load_conll2002("testb", data_home=data_home())
else:
    Xtr, ytr = load_conll2000("train", data_home=data_home()); Xte, yte = load_conll2000("test", data_home=data_home())
Ftr = [sent2features(s) for s in Xtr]; Fte = [sent2features(s) for s in Xte]
t = time.perf_counter(); M = SequenceVectorizer().fit_transform(Ftr); print("vectorize", time.perf_counter() - t, M.n_features, M.matrix.nnz)
warnings.simplefilter("ignore")
m = CRFClassifier()
t = time.perf_counter(); m.fit(Ftr, ytr); dt = time.perf_counter() - t
print("lbfgs fit", dt, m.n_iter_, span_f1_score(yte, [list(p) for p in m.predict(Fte)]), (m.coef_ != 0).sum())
