"""The `hwgen` command line, above every other package: one module per subcommand in `cli.commands`."""
