import typer

app = typer.Typer(
    name="tewatch",
    help="Benchmark and regression tracker for Transformer Engine's low-precision paths.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # markdown, not rich: rich mode keeps the line breaks of a docstring in `tewatch --help`
    rich_markup_mode="markdown",
)
