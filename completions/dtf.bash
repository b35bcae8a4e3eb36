# bash completion for dtf. Install: source this file, or copy it to
# /usr/share/bash-completion/completions/dtf.
_dtf() {
  local cur prev cmd opts
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  cmd="${COMP_WORDS[1]}"
  if [[ ${COMP_CWORD} -eq 1 ]]; then
    COMPREPLY=($(compgen -W "gen-records init inspect train predict export serve launch status logs stop scale pack doctor hosts task help --help --version" -- "$cur"))
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
    --profile)
      local names
      names=$(ls profiles/*.toml 2>/dev/null | sed 's|^profiles/||; s|\.toml$||')
      COMPREPLY=($(compgen -W "local $names" -- "$cur") $(compgen -f -X '!*.toml' -- "$cur"))
      return ;;
    --runs-dir|--dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --task-binary|--env-file|--s3-credentials) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --signal) COMPREPLY=($(compgen -W "TERM KILL" -- "$cur")); return ;;
  esac
  case "$cmd" in
    gen-records) opts="--help --job --schema --infer --infer-rows --label --out --shards --shard-key --split --no-header --delimiter --quote --no-trim --missing --compression --threads --index --on-error --overwrite --schema-out --json --profile --workers --runs-dir --part --of --stage-dir --ready-file --s3-credentials" ;;
    init) opts="--help --from-csv --eval-csv --label --delimiter --quote --no-trim --max-rows --json --on-error" ;;
    inspect) opts="--help --limit --stats --json --compression" ;;
    train) opts="--help --job --batch-size --steps --epochs --threads --device --no-eval --no-input-cache --restart --quiet --metrics-out --set" ;;
    serve) opts="--help --job --role --job_name --index --task_index --ps --ps_hosts --workers --worker_hosts --cluster_spec --index-from-env --run-id --run-dir --secret-file --s3-credentials --tls-dir --tls-task-names --ready-file --threads --set --metrics-out --started-workers --members --restore --quiet" ;;
    predict) opts="--help --model --input --format --output --keep --batch-size --threads --profile --workers --runs-dir --shard --of --ready-file --shard-from-env --hold-for-fetch --render --s3-credentials" ;;
    export) opts="--help --model --format --output" ;;
    launch) opts="--help --job --runs-dir --profile --ps --workers --set --metrics-out --dry-run --render --json --detach --resume --accept-new-host-keys --task-binary --grace --start-timeout --deadline" ;;
    status) opts="--help --job --runs-dir --json --watch" ;;
    help) opts="--man gen-records init inspect train predict export serve launch status logs stop scale pack doctor hosts task dtf.toml" ;;
    logs) opts="--help --job --runs-dir -f --follow --json" ;;
    stop) opts="--help --job --runs-dir --grace --json" ;;
    scale) opts="--help --job --runs-dir --workers --wait" ;;
    pack)
      # dtf pack env|image|zip|list: the second word picks the flags.
      case "${COMP_WORDS[2]}" in
        env) opts="--help --out --json --strip-debug" ;;
        image) opts="--help --output --tag --json" ;;
        zip) opts="--help --job --with-data --out --json" ;;
        list) opts="--help --json" ;;
        unpack) opts="--help" ;;
        verify) opts="--help" ;;
        *) opts="--help" ;;
      esac ;;
    doctor) opts="--help --job --runs-dir --profile --ps --workers --accept-new-host-keys --timeout --json" ;;
    hosts)
      # dtf hosts trust
      case "${COMP_WORDS[2]}" in
        trust) opts="--help --profile --job --replace --check" ;;
        *) opts="--help" ;;
      esac ;;
    task)
      # dtf task exec|signal|slurm|spark|check-data|shard-fetch|shard-release|keys: what dtf
      # launch and predict run on a task's host.
      case "${COMP_WORDS[2]}" in
        exec) opts="--help --task --dir --env-file --append" ;;
        signal) opts="--help --dir --signal" ;;
        shard-fetch) opts="--help" ;;
        shard-release) opts="--help" ;;
        slurm) opts="--help --job --run-dir --run-id --ps --workers --threads --base-port --gpus-per-node --set --restore --tls --s3 --batch --metrics-out --started-workers --replace" ;;
        check-data) opts="--help --job --set --s3-credentials" ;;
        keys) opts="--help --from --to --task --index-from-env --ps --workers --role --index-offset" ;;
        spark) opts="--help --job --run-dir --run-id --ps --workers --threads --set --restore --tls --s3 --batch --metrics-out --task-id --addresses" ;;
        *) opts="--help" ;;
      esac ;;
    *) opts="" ;;
  esac
  if [[ "$cmd" == pack && ${COMP_CWORD} -eq 2 ]]; then
    COMPREPLY=($(compgen -W "env image zip list unpack verify --help" -- "$cur"))
  elif [[ "$cmd" == hosts && ${COMP_CWORD} -eq 2 ]]; then
    COMPREPLY=($(compgen -W "trust --help" -- "$cur"))
  elif [[ "$cmd" == task && ${COMP_CWORD} -eq 2 ]]; then
    COMPREPLY=($(compgen -W "exec signal slurm spark check-data shard-fetch shard-release keys --help" -- "$cur"))
  elif [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ "$cmd" == status || "$cmd" == logs || "$cmd" == stop ||
          "$cmd" == scale ]]; then
    # Run ids, and for logs the task names.
    local runs
    runs=$(ls .dtf/runs 2>/dev/null)
    if [[ "$cmd" == logs ]]; then runs="$runs ps:0 worker:0 worker:1"; fi
    COMPREPLY=($(compgen -W "$runs" -- "$cur"))
  elif [[ "$cmd" == pack && "${COMP_WORDS[2]}" == verify ]]; then
    COMPREPLY=($(compgen -d -- "$cur"))
  elif [[ "$cmd" == pack ]]; then
    COMPREPLY=($(compgen -f -X '!*.@(zip|tar)' -- "$cur") $(compgen -d -- "$cur"))
  elif [[ "$cmd" == hosts ]]; then
    COMPREPLY=($(compgen -A hostname -- "$cur"))
  elif [[ "$cmd" == doctor ]]; then
    COMPREPLY=()
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _dtf dtf
