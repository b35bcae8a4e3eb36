# bash completion for dtf. Install: source this file, or copy it to
# /usr/share/bash-completion/completions/dtf.
_dtf() {
  local cur prev cmd opts
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  cmd="${COMP_WORDS[1]}"
  if [[ ${COMP_CWORD} -eq 1 ]]; then
    COMPREPLY=($(compgen -W "gen-records init inspect train predict --help --version" -- "$cur"))
    return
  fi
  case "$prev" in
    --compression)
      if [[ "$cmd" == inspect ]]; then
        COMPREPLY=($(compgen -W "auto none gzip zlib" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "none gzip zlib" -- "$cur"))
      fi
      return ;;
    --on-error) COMPREPLY=($(compgen -W "fail skip" -- "$cur")); return ;;
    --job|--schema|--schema-out) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --out) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --from-csv|--eval-csv|--metrics-out|--output|--input) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --model) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "jsonl csv" -- "$cur")); return ;;
  esac
  case "$cmd" in
    gen-records) opts="--help --job --schema --infer --infer-rows --label --out --shards --shard-key --split --no-header --delimiter --quote --no-trim --missing --compression --threads --index --on-error --overwrite --schema-out --json" ;;
    init) opts="--help --from-csv --eval-csv --label --delimiter --quote --no-trim --max-rows" ;;
    inspect) opts="--help --limit --stats --json --compression" ;;
    train) opts="--help --job --batch-size --steps --epochs --threads --no-eval --restart --quiet --metrics-out" ;;
    predict) opts="--help --model --input --format --output --keep --batch-size --threads" ;;
    *) opts="" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _dtf dtf
