# scripts/cli.sh: --help and --version for weft's shell programs, sourced
# (POSIX sh and bash) as
#
#   . "$root/scripts/cli.sh"
#   cli_help_version NAME "$root" "$0" "$@"
#
# cli_help_version exits when its first argument after the script's path is
# -h or --help (the script's opening comment, status 0) or --version
# ("NAME (weft) MAJOR.MINOR.PATCH", read from include/weft/weft.h, status
# 0), and returns otherwise.

# cli_usage FILE: FILE's opening comment, after the #! line, without '# '.
cli_usage() {
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$1"
}

# cli_weft_version ROOT: MAJOR.MINOR.PATCH of ROOT/include/weft/weft.h.
cli_weft_version() {
	sed -n 's/^#define WEFT_VERSION_[A-Z]* *\([0-9][0-9]*\).*/\1/p' "$1/include/weft/weft.h" |
		paste -sd. -
}

# cli_version NAME ROOT: "NAME (weft) MAJOR.MINOR.PATCH".
cli_version() {
	printf '%s (weft) %s\n' "$1" "$(cli_weft_version "$2")"
}

cli_help_version() {
	case ${4-} in
	-h | --help) cli_usage "$3"; exit 0 ;;
	--version) cli_version "$1" "$2"; exit 0 ;;
	esac
}
