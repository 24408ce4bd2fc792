"""`pool-advisor advise`: proposed settings that fit, with the arithmetic and evidence."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from advisor.advise.records import ServerAdvice


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    app.command(
        "advise",
        help=(
            "Propose, for every server that does not fit (or all with --all), pool sizes, "
            "PgBouncer settings, max_connections and work_mem that fit, each with the "
            "arithmetic before and after and the assumption it rests on. --diff prints the "
            "edits as a unified diff; --write applies them after asking."
        ),
    )(advise_command)


def _pairs(values: list[str] | None, option: str, cast: type) -> dict[str, float]:
    out: dict[str, float] = {}
    for raw in values or []:
        for item in raw.split(","):
            name, sep, value = item.partition("=")
            try:
                if not sep or not name.strip():
                    raise ValueError
                out[name.strip()] = cast(value)
                if out[name.strip()] < 0:
                    raise ValueError
            except ValueError:
                raise typer.BadParameter(
                    f"{item!r}: expected NAME=NUMBER (e.g. checkout=3)", param_hint=option
                ) from None
    return out


def advise_command(
    paths: Annotated[list[str], typer.Argument(help="Files or folders, as for check.")],
    all_servers: Annotated[
        bool, typer.Option("--all", help="Advise on servers that already fit too.")
    ] = False,
    sweep: Annotated[
        Path | None,
        typer.Option(
            "--sweep",
            help="A sweep table (CSV/TSV from `pool-advisor sweep` or your own: clients, tps, "
            "p99_ms): its USL fit sets the active-connection target.",
        ),
    ] = None,
    spindles: Annotated[
        float, typer.Option("--spindles", min=0, help="Effective spindles for the floor.")
    ] = 1,
    force: Annotated[
        bool, typer.Option("--force", help="Use a --sweep whose fit is unreliable (too few "
                           "points, R² below --min-r2).")
    ] = False,
    new_pooler: Annotated[
        bool, typer.Option("--new-pooler/--no-new-pooler", help="Propose a transaction-mode "
                           "PgBouncer where direct clients ask for more than twice what the "
                           "server should run at once (else: smaller pools only).")
    ] = True,
    min_r2: Annotated[
        float, typer.Option("--min-r2", min=0, max=1, help="R² below which a sweep's fit is "
                            "not used without --force.")
    ] = 0.8,
    weight: Annotated[
        list[str] | None,
        typer.Option("--weight", help="NAME=W: split the budget by these weights."),
    ] = None,
    minimum: Annotated[
        list[str] | None,
        typer.Option("--min", help="NAME=N: never give this workload a pool below N."),
    ] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Print the edits as a unified diff.")] = (
        False
    ),
    write: Annotated[
        bool, typer.Option("--write", help="Apply the edits to the files (asks first).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before --write.")] = False,
    values: Annotated[list[str] | None, typer.Option(
        "--values", help="Helm values file (repeatable), as for check.")] = None,
    set_values: Annotated[list[str] | None, typer.Option(
        "--set", help="Helm --set value (repeatable), as for check.")] = None,
    release: Annotated[str | None, typer.Option("--release", help="Helm release name.")
                       ] = None,
    namespace: Annotated[str | None, typer.Option(
        "--namespace", help="Namespace for objects that name none.")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="Configuration file.")] = None,
    pg_version: Annotated[
        int | None, typer.Option("--pg-version", help="PostgreSQL major version.")
    ] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format")] = OutputFormat.text,
    root: Annotated[
        Path | None,
        typer.Option("--root", help="The repository, as for check (default: the git "
                     "top-level holding the paths, else their common folder)."),
    ] = None,
) -> None:
    from advisor.advise.plan import advise
    from advisor.advise.records import AdviseOptions
    from advisor.advise.text import render_text
    from advisor.read.fs import InputError
    from advisor.scan import LoadError, load_with_settings

    try:
        loaded_sweep = None
        if sweep is not None:
            from advisor.live.sweep_table import read_sweep

            loaded_sweep = read_sweep(sweep)
        options = AdviseOptions(
            all_servers=all_servers,
            weights=_pairs(weight, "--weight", float),
            minimums={k: int(v) for k, v in _pairs(minimum, "--min", int).items()},
            sweep=loaded_sweep,
            spindles=spindles,
            force=force,
            min_r2=min_r2,
            new_pooler=new_pooler,
        )
        helm = {"values_files": values or [], "set_values": set_values or [],
                "release": release, "namespace": namespace}
        topo, budgets, memory, settings, repo = load_with_settings(
            paths, config=config, pg_version=pg_version, root=root, **helm
        )
        options.memory = memory
        options.chart_dirs, options.kustomizations = _chart_dirs(repo, paths)
        # Declared in the configuration ([[workloads]] weight, min-pool-size); the
        # command line wins.
        for w in settings.workloads:
            if w.weight is not None:
                options.weights.setdefault(w.name, w.weight)
            if w.min_pool_size is not None:
                options.minimums.setdefault(w.name, w.min_pool_size)
    except InputError as exc:
        _fail(f"{exc.label()}: {exc.message}")
        return
    except LoadError as exc:
        _fail(str(exc))
        return
    result = advise(topo, budgets, options)
    edits = [p.edit for a in result for p in a.proposals if p.edit is not None]
    from advisor.advise.assumed import mark_by_hand
    from advisor.advise.edits import plan
    from advisor.advise.edits import write as write_files

    # Edits are relative to the repository root: the diff applies with `git apply` there.
    edit_plan = plan(edits, [repo]) if edits else None
    new_files = _new_files(result, repo)
    # before the text: the After block says which proposals the diff makes
    result = mark_by_hand(result, edit_plan.refused if edit_plan else [],
                          {shown for _, shown, _ in new_files})

    if output_format is OutputFormat.json:
        import json

        payload = {
            "schema_version": 1,
            "servers": [a.model_dump(mode="json") for a in result],
        }
        typer.echo(json.dumps(payload, indent=2))
    else:
        typer.echo(render_text(result), nl=False)
    files = [Path(p) for p in paths if p != "-"]
    left = _left_after(files, repo, edit_plan, new_files, config, pg_version, helm)
    if not (diff or write) or (edit_plan is None and not new_files):
        if (diff or write) and not edits:
            typer.echo("no file edits to make", err=True)
        _exit_for(result, left)
        return

    from advisor.advise.edits import EditPlan

    edit_plan = edit_plan or EditPlan()
    for e, why in edit_plan.refused:
        typer.echo(f"not edited: {e.key} {e.old} -> {e.new}: {why}", err=True)
    if diff or write:
        out = sys.stderr if output_format is OutputFormat.json else sys.stdout
        out.write(edit_plan.diff() + "".join(_added_diff(shown, text)
                                             for _, shown, text in new_files))
        if not write:
            for c in edit_plan.changes:
                if c.masks:  # a diff that `git apply` refuses must not be a surprise
                    typer.echo(f"not applicable as printed: {c.path}: its secret values are "
                               "shown as ***, so `git apply` refuses this hunk; write it "
                               "with `advise --write`, or make the edit by hand", err=True)
    if write and (edit_plan.changes or new_files):
        if not yes:
            if not sys.stdin.isatty():
                _fail("--write asks before changing files; pass --yes to write without asking")
                return
            names = ", ".join([c.path for c in edit_plan.changes]
                              + [shown for _, shown, _ in new_files])
            if not typer.confirm(f"Write these changes to {names}?", default=False):
                typer.echo("nothing written", err=True)
                raise typer.Exit(0)
        from advisor.advise.edits import WriteRefused

        try:
            for name in write_files(edit_plan):
                typer.echo(f"wrote {name}", err=True)
        except WriteRefused as exc:
            for name in exc.written:
                typer.echo(f"wrote {name}", err=True)
            _fail(str(exc))
            return
        for real, shown, text in new_files:
            with real.open("x", encoding="utf-8") as handle:  # never over an existing file
                handle.write(text)
            typer.echo(f"added {shown}", err=True)
    _exit_for(result, left)


_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")


def _chart_dirs(repo: Path, paths: list[str],
                ) -> tuple[list[str], dict[str, tuple[str, int | None]]]:
    """The folders of the repository's Helm charts (relative, posix), for where a
    manifest advise adds for a chart's server goes (its templates/); and its
    kustomizations by folder, with the line a manifest added there is listed after."""
    from advisor.advise.pooler import resources_end
    from advisor.read.discover import discover_names
    from advisor.read.fs import InputError, decode_text

    found = discover_names(repo, lambda name: name == "Chart.yaml" or name in _KUSTOMIZATIONS,
                           given=[Path(p) for p in paths if p != "-"])
    root = repo.resolve()
    charts = sorted({chart.parent.relative_to(root).as_posix()
                     for chart in found.names.get("Chart.yaml", [])})
    kustomized: dict[str, tuple[str, int | None]] = {}
    for name in _KUSTOMIZATIONS:
        for k in found.names.get(name, []):
            folder, shown = k.parent.relative_to(root).as_posix(), \
                k.relative_to(root).as_posix()
            try:
                text = decode_text(shown, k.read_bytes())
            except (OSError, InputError):
                text = ""  # listed by hand
            kustomized.setdefault(folder, (shown, resources_end(text)))
    return charts, kustomized


def _new_files(result: list[ServerAdvice], repo: Path) -> list[tuple[Path, str, str]]:
    """(real path, shown path, text) of the files advise proposes to add; one that
    exists already is not overwritten, and said."""
    out = []
    for a in result:
        for p in a.proposals:
            if p.new_file is None:
                continue
            real = repo / p.new_file.path
            if real.exists() or real.is_symlink():
                typer.echo(f"not added: {p.new_file.path} exists; add the proposal by hand",
                           err=True)
                continue
            out.append((real, p.new_file.path, p.new_file.text))
    return out


def _added_diff(shown: str, text: str) -> str:
    """A new file as `git apply` takes it."""
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/{shown} b/{shown}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{shown}\n@@ -0,0 +1,{len(lines)} @@\n{body}")


def _left_after(files: list[Path], repo: Path, edit_plan, new_files: list,
                config: Path | None, pg_version: int | None, helm: dict) -> list | None:
    """What check still reports once advise's edits are written (None: not known)."""
    if not files:
        return None
    from advisor.advise.trial import remaining_after

    changes = [(c.real, c.after) for c in edit_plan.changes] if edit_plan else []
    changes += [(real, text) for real, _, text in new_files]
    try:
        return remaining_after(files, changes, config=config, pg_version=pg_version,
                               root=repo, **helm)
    except Exception as exc:  # the trial check is advice about advice: never a crash
        typer.echo(f"notice: could not check the repository after the edits: {exc}", err=True)
        return None


def _exit_for(result: list[ServerAdvice], left: list | None) -> None:
    """0 when check passes after advise's edits; else 1, with what stays and why."""
    if left:
        print(f"\nStill reported by check after these edits ({len(left)}): fix by hand or "
              "accept", file=sys.stderr)
        for f in left:
            how = f" — {f.fix.description}" if f.fix else ""
            print(f"  {f.location.label()}: {f.code} {f.name}: "
                  f"{f.message.split('. ')[0]}{how}", file=sys.stderr)
        raise typer.Exit(1)
    # 1 when a server still would not fit even with every proposal applied.
    if any(not a.fits_after for a in result):
        raise typer.Exit(1)


def _fail(message: str) -> None:
    print(f"pool-advisor: {message}", file=sys.stderr)
    raise typer.Exit(2)
