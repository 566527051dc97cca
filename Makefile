# Every target sets up .venv itself: a fresh clone needs only `make demo` or `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-all fuzz bench lint figures clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,lint]'
	touch $(STAMP)

# every kind's example specs (specs/<kind>/*.json): a new kind's are solved with no edit here
DEMO_SPECS = $(sort $(filter-out specs/studies/% specs/replay/%,$(wildcard specs/*/*.json)))

demo: $(STAMP)
	@for spec in $(DEMO_SPECS); do \
		$(BIN)/fairalloc solve $$spec || exit $$?; \
	done
	$(BIN)/fairalloc compare specs/emrf/example1-knob0.5.json
	$(BIN)/fairalloc sweep specs/emrf/example1-knob0.5.json --set knob=0:1:0.1 --plot sweep-example1.png
	$(BIN)/fairalloc compare specs/etf/weighted.json
	$(BIN)/fairalloc sweep specs/etf/resnet-mobilenet.json --set phi=0:1:0.05 --plot sweep-etf-tradeoff.png
	$(BIN)/fairalloc solve specs/moldable/example1.json --method gpusched2 --plot gantt-example1.png
	$(BIN)/fairalloc experiment moldable --jobs 20 --processors 8 --instances 40 --plot experiment-moldable.png
	$(BIN)/fairalloc experiment accelos --kernels 4 --mixes 50 --seed 1 --plot experiment-accelos.png
	$(BIN)/fairalloc simulate specs/token/five-spark-types.json --rounds 1000 --plot simulate-token.png
	$(BIN)/fairalloc replay specs/replay/quick.json --plot replay-quick.png

# make test: the quick tier, every test but those marked slow (over 2 s each); make test-all:
# every test, as .ci/run does. Both spread the tests over the cores (pytest-xdist);
# TEST_WORKERS=0 runs them in this one process, TEST_WORKERS=N on N.
TEST_WORKERS ?= auto
test: $(STAMP)
	$(BIN)/pytest -m 'not slow' -n $(TEST_WORKERS)

test-all: $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --durations=25

# A long hostile-input campaign (tests/test_fuzz.py): FAIRALLOC_FUZZ_EXAMPLES=N make fuzz
fuzz: $(STAMP)
	FAIRALLOC_FUZZ_EXAMPLES=$${FAIRALLOC_FUZZ_EXAMPLES:-500} $(BIN)/pytest tests/test_fuzz.py -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py --write benchmarks/RESULTS.md

# The figures of docs/reports.md (docs/figures/), made by the commands they illustrate.
# gavel-fig8.png and gavel-fig9.png are remade from the stores of their studies when those
# stores are present: run `fairalloc study run specs/studies/gavel-fig8-gavel-stream.json
# --store $(FIG8_STORE) --workers 2` first (28 replays, 17 minutes on 2 workers), and for
# figure 9 `fairalloc study run specs/studies/gavel-fig9.json --store $(FIG9_STORE)` (60
# replays, see docs/replay.md); drawing each takes seconds.
FIG := docs/figures
FIG8_STORE ?= gavel-fig8-gavel-stream.duckdb
FIG9_STORE ?= gavel-fig9.duckdb
figures: $(STAMP)
	mkdir -p $(FIG)
	$(BIN)/fairalloc sweep specs/emrf/example1-knob0.5.json --set knob=0:1:0.05 --methods lp,wfq,drf --plot $(FIG)/emrf-sweep.png -q > /dev/null
	$(BIN)/fairalloc sweep specs/drf/classic.json --set 'users[0].weight=1:4:0.25' --methods progressive-filling,lp --plot $(FIG)/drf-sweep.png -q > /dev/null
	$(BIN)/fairalloc sweep specs/etf/resnet-mobilenet.json --set phi=0:1:0.05 --plot $(FIG)/etf-sweep.png -q > /dev/null
	$(BIN)/fairalloc solve specs/moldable/example1.json --method gpusched2 --plot $(FIG)/moldable-gantt.png > /dev/null
	$(BIN)/fairalloc solve specs/hetero/gavel-mix.json --plot $(FIG)/hetero-allocation.png -q > /dev/null
	$(BIN)/fairalloc experiment moldable --jobs 20 --processors 8 --instances 40 --plot $(FIG)/moldable-experiment.png -q > /dev/null
	$(BIN)/fairalloc experiment accelos --kernels 4 --mixes 50 --seed 1 --plot $(FIG)/accelos-experiment.png -q > /dev/null
	$(BIN)/fairalloc simulate specs/token/five-spark-types.json --rounds 1000 --plot $(FIG)/token-simulation.png -q > /dev/null
	$(BIN)/fairalloc sweep specs/hetero/gavel-mix.json --set 'jobs[5].weight=1:4:0.25' --methods max-min,leximin,agnostic-max-min --plot $(FIG)/hetero-sweep.png -q > /dev/null
	$(BIN)/fairalloc study run specs/studies/moldable-section-v.json --store $(FIG)/.study.duckdb -q
	$(BIN)/fairalloc study summary $(FIG)/.study.duckdb --plot $(FIG)/study-summary.png > /dev/null
	rm -f $(FIG)/.study.duckdb
	@for figure in 8:$(FIG8_STORE) 9:$(FIG9_STORE); do \
		n=$${figure%%:*}; store=$${figure#*:}; \
		if [ -f $$store ]; then \
			$(BIN)/python benchmarks/gavel_figure.py $$n $$store -o $(FIG)/gavel-fig$$n.png > /dev/null || exit $$?; \
		else echo "$(FIG)/gavel-fig$$n.png kept: no $$store (see docs/replay.md)"; fi; \
	done

lint: $(STAMP)
	$(BIN)/ruff check fairalloc fairalloc_command.py tests benchmarks

clean:
	rm -rf $(VENV) build *.egg-info sweep-*.png gantt-*.png experiment-*.png simulate-*.png replay-*.png
