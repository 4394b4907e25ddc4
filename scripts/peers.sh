#!/bin/bash
# dpsynth's MST and AIM beside dpmm's (SAS) and OpenDP's AIM (opendp.extras.mbi), all on
# Private-PGM's kind of model, on Adult at ε = 1, δ = 1e-5, with the same public domain and
# 32 uniform bins, in one sitting: seconds to train and sample (wall, and CPU: user + system
# of every thread, which a busy machine does not inflate), and RF AUROC (train on
# synthetic, test on the real test split, `dpsynth evaluate`).
# The peers are installed into throw-away venvs under OUT (dpmm pins an older opendp, so
# OpenDP gets a venv of its own). Each peer run is capped at PEER_SECONDS (default 3600);
# a capped run is reported as such. PEERS="dpmm opendp" picks which to run.
#   scripts/peers.sh OUT
set -uo pipefail
out=$1; mkdir -p "$out"
bin=${DPSYNTH:-target/release/dpsynth}
cap=${PEER_SECONDS:-3600}
peers=${PEERS:-dpmm opendp}
train=assets/adult/adult_train.csv; test=assets/adult/adult_test.csv
schema=assets/adult/adult.schema.json
rows=$(($(wc -l < "$train") - 1))
venv() { # dir packages…
  local dir=$1; shift
  if [ ! -x "$dir/bin/python" ]; then
    python3 -m venv "$dir" && "$dir/bin/pip" install -q "$@" || exit 1
  fi
}
[[ $peers == *dpmm* ]] && venv "$out/venv" dpmm
[[ $peers == *opendp* ]] && venv "$out/venv-opendp" 'opendp[mbi]' pandas
score() { # name csv
  "$bin" evaluate --real-train "$train" --real-test "$test" --schema "$schema" \
    --synthetic "$2" --label income --json "$out/$1.report.json" > /dev/null 2>&1
  python3 -c "
import json,sys
r={x['model']:x['synthetic'].get('Ok',{}) for x in json.load(open('$out/$1.report.json'))['tstr']['rows']}
print('%.3f' % r['random_forest']['auroc'])"
}
timed() { # log command… : wall and CPU seconds of the command into log
  /usr/bin/time -f "%e %U %S" -o "$1" "${@:2}"
}
secs() { # log…: "wall s (cpu s CPU)" summed over the logs
  python3 -c "
import sys
w=c=0
for f in sys.argv[1:]:
    e,u,s=map(float,open(f).read().split()[-3:]); w+=e; c+=u+s
print('%.1f s (%.1f s CPU)' % (w,c))" "$@"
}
peer() { # name method script venv
  local name=$1 m=$2 script=$3 py=$4/bin/python
  if timeout "$cap" /usr/bin/time -f "%e %U %S" -o "$out/$name-$m.time" "$py" "$script" "$m" \
      "$train" "$schema" 1 1e-5 32 "$out/$name-$m.csv" > "$out/$name-$m.json" 2> "$out/$name-$m.err"; then
    echo "| $name $m | $(secs "$out/$name-$m.time") | $(score "$name-$m" "$out/$name-$m.csv") |"
  else
    echo "| $name $m | not finished in $cap s (or failed: $out/$name-$m.err) | — |"
  fi
}
echo "| method | train + sample | RF AUROC |"
echo "|---|---|---|"
for m in mst aim; do
  export DPSYNTH_LEDGER="$out/$m.ledger.sqlite3"; rm -f "$DPSYNTH_LEDGER"
  timed "$out/dpsynth-$m.train.time" "$bin" train --data "$train" --schema "$schema" --method "$m" \
    --epsilon 1 --delta 1e-5 --set bins=32 --out "$out/dpsynth-$m.dpsynth" > /dev/null 2>&1
  timed "$out/dpsynth-$m.sample.time" "$bin" sample --model "$out/dpsynth-$m.dpsynth" --rows "$rows" \
    --out "$out/dpsynth-$m.csv" 2> /dev/null
  echo "| dpsynth $m | $(secs "$out/dpsynth-$m.train.time" "$out/dpsynth-$m.sample.time") | $(score dpsynth-$m "$out/dpsynth-$m.csv") |"
  [[ $peers == *dpmm* ]] && peer dpmm "$m" scripts/peers_dpmm.py "$out/venv"
  # OpenDP's MST stops on its own budget split (one ulp short: "insufficient budget for
  # query"), so only its AIM runs.
  [[ $peers == *opendp* && $m == aim ]] && peer opendp "$m" scripts/peers_opendp.py "$out/venv-opendp"
done
