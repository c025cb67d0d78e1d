# ThinTensor's host path and llama.cpp's CPU path, same checkpoint, same 2 cores, alternated.
set -u
export THINTENSOR_HOME=/tmp/rand1b/home
TT=/tmp/vab/thintensor; LB=/tmp/llcpp/lltrim/build/bin/llama-bench; Q=/tmp/llcpp/lltrim/build/bin/llama-quantize
O=/tmp/llcpp/out; mkdir -p $O; cd /tmp/rand1b
for t in Q4_0 Q4_K_M Q8_0; do [ -f r-$t.gguf ] || $Q r.gguf r-$t.gguf $t > $O/quantize-$t.log 2>&1; done
ls -la r*.gguf > $O/ggufs.txt
tt() { $TT -q bench r.thin --device host --threads 2 --profile $1 --prompt-lengths 0 --gen-tokens 32 --reps 2 --json > $O/tt.$1.$2.json 2>$O/tt.$1.$2.err
       echo "tt $1 $2 $(date -u +%T) $(python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results'][0]; print(round(r['tokens_per_s'],2), round(r['sd'],2))" $O/tt.$1.$2.json)"; }
ll() { $LB -m r$1.gguf -t 2 -p 0 -n 32 -r 3 -o jsonl > $O/ll$1.$2.jsonl 2>$O/ll$1.$2.err
       echo "ll $1 $2 $(date -u +%T) $(python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]; print(round(r['avg_ts'],2), round(r['stddev_ts'],2), r.get('model_size'), r.get('model_type'))" $O/ll$1.$2.jsonl)"; }
for i in 1 2; do tt max-max-perf $i; ll -Q4_0 $i; ll -Q4_K_M $i; done
tt max-performance 1; ll -Q8_0 1; tt balanced 1; ll "" 1
echo done
