import typer

app = typer.Typer(
    name="tewatch",
    help="Benchmark and regression tracker for Transformer Engine's low-precision paths.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
