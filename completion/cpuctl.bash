# bash completion for cpuctl(1): commands, options, strategies, SMT states and the mask
# selectors with this machine's numbers (package:N, die:N from the online CPUs' topology,
# node:N from /sys/devices/system/node, core:N for every CPU), plus all and smt.
# Stand-alone: it needs nothing from the bash-completion package.
# _CPUCTL_SYSFS (default /sys) points it at another sysfs tree (tests).

_cpuctl_selectors() {
    local sys=${_CPUCTL_SYSFS:-/sys} f d n
    local -A seen=()
    local out=(all smt)
    for f in "$sys"/devices/system/cpu/cpu[0-9]*/topology/physical_package_id; do
        [[ -r $f ]] && read -r n <"$f" && [[ $n =~ ^[0-9]+$ ]] && seen[package:$n]=1
    done
    for f in "$sys"/devices/system/cpu/cpu[0-9]*/topology/die_id; do
        [[ -r $f ]] && read -r n <"$f" && [[ $n =~ ^[0-9]+$ ]] && seen[die:$n]=1
    done
    for d in "$sys"/devices/system/node/node[0-9]*; do
        [[ -d $d ]] && seen[node:${d##*/node}]=1
    done
    for d in "$sys"/devices/system/cpu/cpu[0-9]*; do
        [[ -d $d ]] && seen[core:${d##*/cpu}]=1
    done
    printf '%s\n' "${out[@]}" "${!seen[@]}"
}

_cpuctl() {
    local i=$COMP_CWORD
    local cur=${COMP_WORDS[i]} prev=${COMP_WORDS[i - 1]:-}
    # With ':' in COMP_WORDBREAKS (the default) bash splits "package:1" into "package",
    # ":", "1": put the word under the cursor back together.
    local colon=
    if [[ $cur == : ]]; then
        cur=${COMP_WORDS[i - 1]}:
        prev=${COMP_WORDS[i - 2]:-}
        colon=1
    elif [[ $prev == : && $i -ge 2 ]]; then
        cur=${COMP_WORDS[i - 2]}:$cur
        prev=${COMP_WORDS[i - 3]:-}
        colon=1
    fi

    # After `offline|online MASK --`, a command line of its own.
    local k
    for ((k = 1; k < i; k++)); do
        if [[ ${COMP_WORDS[k]} == -- ]]; then
            if declare -F _command_offset >/dev/null; then
                _command_offset $((k + 1))
            else
                COMPREPLY=($(compgen -c -- "$cur" | sort -u))
            fi
            return
        fi
    done

    local commands="offline online plan status topology smt cancel holds release profile watch"
    local global="--json --timeout --bus-address --help --help-all --version"
    local batch="--best-effort --strategy"

    # The command, and the words after it (not counting options and their values).
    # profile_sub: the word after `profile` (apply, revert, ...).
    local cmd= nargs=0 profile_sub= j w
    for ((j = 1; j < i; j++)); do
        w=${COMP_WORDS[j]}
        case ${COMP_WORDS[j - 1]} in --timeout | --bus-address | --strategy | --who | --why) continue ;; esac
        [[ $w == : || ${COMP_WORDS[j + 1]:-} == : || ${COMP_WORDS[j - 1]} == : ]] && continue
        [[ $w == -* ]] && continue
        if [[ -z $cmd ]]; then
            [[ " $commands " == *" $w "* ]] && cmd=$w
        else
            nargs=$((nargs + 1))
            ((nargs == 1)) && [[ $cmd == profile ]] && profile_sub=$w
        fi
    done

    case $prev in
    --strategy)
        COMPREPLY=($(compgen -W "auto bulk smt per-cpu" -- "$cur"))
        return
        ;;
    --timeout | --bus-address | --who | --why)
        COMPREPLY=()
        return
        ;;
    esac

    local words=
    if [[ $cur == -* ]]; then
        case $cmd in
        offline) words="$batch --dry-run --refuse-pinned --force --who --why --no-restore -- $global" ;;
        online) words="$batch --dry-run --who --why --no-restore -- $global" ;;
        smt) words="$batch --dry-run --refuse-pinned --force $global" ;;
        plan) words="$batch --refuse-pinned --force $global" ;;
        cancel) words="--no-wait $global" ;;
        status | topology) words="--map --no-color $global" ;;
        profile)
            words=$global
            ((nargs >= 1)) && words="--strategy --dry-run $global"
            [[ $profile_sub == apply ]] && words="--strategy --dry-run --refuse-pinned --force $global"
            ;;
        *) words=$global ;;
        esac
    else
        case $cmd in
        "") words=$commands ;;
        offline | online) words=$(_cpuctl_selectors) ;;
        plan)
            if ((nargs == 0)); then words="offline online"; else words=$(_cpuctl_selectors); fi
            ;;
        smt) ((nargs == 0)) && words="on off" ;;
        profile) ((nargs == 0)) && words="list show apply revert" ;;
        esac
    fi
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    # bash inserts each reply in place of the text after the last ':' only.
    if [[ -n $colon || $cur == *:* ]] && [[ $COMP_WORDBREAKS == *:* ]]; then
        local k prefix=${cur%"${cur##*:}"}
        for k in "${!COMPREPLY[@]}"; do
            COMPREPLY[k]=${COMPREPLY[k]#"$prefix"}
        done
    fi
}
complete -F _cpuctl cpuctl
