export THINTENSOR_HOME=/tmp/rand1b/home
cd /tmp/vab
for i in 1 2; do for b in thintensor thintensor.thp; do
  ./$b -q bench /tmp/rand1b/r.thin --device host --threads 2 --profile max-max-perf --prompt-lengths 0 --depths 2048 --context 2200 --gen-tokens 32 --reps 1 --json > d2k.$b.$i.json 2>d2k.$b.$i.err
  echo "$b $i $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(r['test'], round(r['tokens_per_s'],2)) for r in d['results']])" d2k.$b.$i.json)"
done; done
/tmp/llcpp/lltrim/build/bin/llama-bench -m /tmp/rand1b/r-Q4_0.gguf -t 2 -p 0 -n 32 -d 2048 -r 2 -o jsonl > d2k.ll-Q4_0.jsonl 2>d2k.ll.err
echo "ll Q4_0 d2048 $(python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]; print(round(r['avg_ts'],2), round(r['stddev_ts'],2))" d2k.ll-Q4_0.jsonl)"
echo done
