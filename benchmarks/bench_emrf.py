"""Benchmarks 2 and 3: EMRF solve and checks at 1e5-1e6 users, and the efficiency LP's two
formulations."""

from __future__ import annotations

import gc

from harness import Row, Table, checks_table, log, random_spec, safe, size, timed, timed_row


def emrf_mechanism(problem):
    """The mechanism the brief asks for: the EMRF ``lp`` method with default options."""
    from fairalloc.registry import KINDS

    return KINDS["emrf"].methods["lp"](problem)


def bench_emrf(quick: bool) -> list[Table]:
    """Target 2: fairalloc.solve on a loaded EMRF spec, 1e6 users / ~10 ratios, under 1 s."""
    import fairalloc
    from fairalloc.registry import KINDS

    target_n, target = 10**6, 1.0
    sizes = (10**4, 10**5) if quick else (10**5, 10**6)
    validate_n = sizes[0]
    rows: list[Row] = []
    for n in sizes:
        data = random_spec("emrf", users=n)
        case = f"load_spec(dict), {size(n)} users (setup, not timed below)"
        log(f"emrf: {case}")
        loaded: dict = {}

        def load(data=data, loaded=loaded):
            loaded["spec"] = fairalloc.load_spec(data)
            return loaded["spec"]

        rows.append(safe(case, lambda case=case, load=load: Row(
            case, timed(load)[0], runs=1, note="schema check + preconditions")))
        spec = loaded.get("spec")
        del data
        if spec is None:
            continue
        goal = target if n == target_n else None

        def describe(r, t):
            formulation = r.solver["extra"].get("formulation", r.solver["name"] or "")
            return f"status {r.status}, objective {r.objective:.6g}; {formulation}"

        rows.append(timed_row(f"solve(spec, validate=False), {size(n)} users",
                              lambda spec=spec: fairalloc.solve(spec, validate=False),
                              goal, describe=describe))
        if n == validate_n:
            rows.append(timed_row(
                f"solve(spec, validate=True), {size(n)} users",
                lambda spec=spec: fairalloc.solve(spec, validate=True),
                describe=lambda r, t: "checks: " + ", ".join(
                    f"{f.check} {f.verdict}" for f in r.validation),
                profile=False))
            result = fairalloc.solve(spec, validate=False)
            kind = KINDS["emrf"]

            for check in kind.checks:
                def call(check=check, spec=spec, result=result):
                    return check(spec.problem, result.allocation, mechanism=emrf_mechanism)

                rows.append(timed_row(
                    f"check `{check.__name__}`, {size(n)} users", call,
                    describe=lambda f, t: "skipped (None)" if f is None else
                    f"{f.verdict}: {f.detail}",
                    profile=False))
        del spec
        gc.collect()
    return [Table(
        "emrf", "2. EMRF solve through the API (spec already loaded)",
        "Random splits from 10 distinct cpu/gpu ratios, random weights, knob 0.5. Timed: "
        "`fairalloc.solve(spec, validate=False)` after `fairalloc.load_spec(dict)`; each "
        "validator of `KINDS['emrf']` separately on the same allocation with "
        "`mechanism = lambda p: KINDS['emrf'].methods['lp'](p)`. "
        "Target from the issue: 1e6 users under 1 s.",
        rows), bench_emrf_checks(quick)]


def bench_emrf_checks(quick: bool) -> Table:
    """EMRF: every check against the default method's solve at 1e4 and 1e5 users (issue 24)."""
    return checks_table("emrf", "users", (10**3, 10**4) if quick else (10**4, 10**5),
                        lambda n: random_spec("emrf", users=n))


def bench_formulation(quick: bool) -> list[Table]:
    """Target 3: the literal Pyomo LP vs the ratio-class LP for EMRF."""
    import fairalloc
    from fairalloc.models.emrf import efficiency_model, residual_capacity

    sizes = (100, 1000) if quick else (100, 1000, 10000)
    rows: list[Row] = []
    # warm-up: the first Pyomo solve pays for importing and registering the HiGHS interface
    warm_up = fairalloc.load_spec(random_spec("emrf", users=10, formulation="literal"))
    fairalloc.solve(warm_up, validate=False)
    for n in sizes:
        objectives = {}
        for formulation in ("classes", "literal"):
            spec = fairalloc.load_spec(random_spec("emrf", users=n, formulation=formulation))

            def describe(r, t, formulation=formulation, objectives=objectives):
                objectives[formulation] = r.objective
                return f"objective {r.objective:.10g}"

            row = timed_row(f"EMRF {formulation}, {size(n)} users",
                            lambda spec=spec: fairalloc.solve(spec, validate=False),
                            describe=describe, profile=False)
            if formulation == "literal" and rows and rows[-1].seconds and row.seconds:
                row.note += f"; {row.seconds / rows[-1].seconds:.0f}x the class path"
                a, b = objectives.get("classes"), objectives.get("literal")
                if a is not None and b is not None:
                    row.note += f", objectives differ by {abs(a - b) / max(abs(a), 1e-300):.1e}"
            rows.append(row)
            if formulation == "literal":
                m = spec.problem.market
                residual = residual_capacity(m, spec.problem.effective_knob())
                rows.append(timed_row(
                    f"&nbsp;&nbsp;of which building the Pyomo model, {size(n)} users",
                    lambda m=m, residual=residual: efficiency_model(m, residual),
                    describe=lambda model, t: f"{model.nconstraints()} constraints, "
                                              f"{model.nvariables()} variables",
                    profile=False))
    return [Table(
        "formulation", "3. EMRF efficiency LP: literal Pyomo model vs ratio classes",
        "Same random specs as target 2 (10 ratio classes), `options.formulation` set to "
        "`classes` or `literal`; timed: `fairalloc.solve(spec, validate=False)`. The literal "
        "model has one variable per user and chains F_i/S_i = F_j/S_j user to user; the class "
        "path has one variable per ratio class whatever n is.",
        rows)]
