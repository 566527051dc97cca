"""``completion``: a shell completion script made from the parser itself, so that every
command a group registers completes without further work."""

from __future__ import annotations

import argparse

from fairalloc.cli.options import Commands


def register(commands: Commands) -> None:
    sp = commands.add("completion", cmd_completion, "print a shell completion script: "
                      'eval "$(fairalloc completion bash)"', spec=False)
    sp.add_argument("shell", choices=("bash", "zsh"))
    sp.set_defaults(root=commands.root)


def cmd_completion(args) -> int:
    """A shell completion script (bash; zsh through its bashcompinit) made from the whole
    parser: commands, each command's flags, the choices of flags and positionals, files
    otherwise."""
    print(completion_script(args.root, args.shell))
    return 0


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {}


def _flags_and_choices(p: argparse.ArgumentParser) -> tuple[list[str], dict[str, list[str]],
                                                             list[str]]:
    """A parser's flags, the choices of each flag that has some, and its first positional's
    choices (subcommands included)."""
    flags, choices, first = [], {}, []
    for action in p._actions:
        if action.option_strings:
            flags += action.option_strings
            if action.choices:
                for flag in action.option_strings:
                    choices[flag] = [str(c) for c in action.choices]
        elif not first and action.choices and action.help != argparse.SUPPRESS:
            first = [str(c) for c in action.choices]
    return flags, choices, first


def completion_script(p: argparse.ArgumentParser, shell: str) -> str:
    """The completion script for ``shell`` (bash or zsh)."""
    commands = _subcommands(p)
    cases, prev_cases = [], []
    for name, sp in commands.items():
        for sub_name, sub in [("", sp), *_subcommands(sp).items()]:
            flags, choices, first = _flags_and_choices(sub)
            key = f"{name} {sub_name}".strip()
            cases.append(f'    "{key}") flags="{" ".join(flags)}"; first="{" ".join(first)}";;')
            prev_cases += [f'    "{key}|{flag}") words="{" ".join(values)}";;'
                           for flag, values in choices.items()]
    top = " ".join([*commands, "--version", "--help"])
    script = f"""# fairalloc completion ({shell}): eval "$(fairalloc completion {shell})"
_fairalloc() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}
  local cmd=${{COMP_WORDS[1]}} key flags="" first="" words=""
  if [[ $COMP_CWORD -eq 1 ]]; then COMPREPLY=($(compgen -W "{top}" -- "$cur")); return; fi
  key=$cmd
  case "$cmd ${{COMP_WORDS[2]}}" in
{chr(10).join(f'    "{c}") key="{c}";;' for c in _nested(commands))}
  esac
  case "$key" in
{chr(10).join(cases)}
  esac
  case "$key|$prev" in
{chr(10).join(prev_cases) if prev_cases else '    "") ;;'}
  esac
  if [[ -n $words ]]; then COMPREPLY=($(compgen -W "$words" -- "$cur")); return; fi
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur")); return; fi
  if [[ -n $first && $COMP_CWORD -eq $(( ${{#key}} > ${{#cmd}} ? 3 : 2 )) ]]; then
    COMPREPLY=($(compgen -W "$first" -- "$cur")); return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}}
complete -o filenames -F _fairalloc fairalloc"""
    if shell == "zsh":
        script = "autoload -U +X bashcompinit && bashcompinit\n" + script
    return script


def _nested(commands: dict[str, argparse.ArgumentParser]) -> list[str]:
    """``command subcommand`` for every command with subcommands (``study run``)."""
    return [f"{name} {sub}" for name, sp in commands.items() for sub in _subcommands(sp)]
