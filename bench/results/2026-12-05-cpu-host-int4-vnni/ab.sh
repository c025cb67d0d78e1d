export THINTENSOR_HOME=/tmp/rand1b/home
cd /tmp/vab
for i in 1 2; do for isa in avx512 avx512-vnni; do
  TT_HOST_ISA=$isa ./thintensor -q bench /tmp/rand1b/r.thin --device host --profile max-max-perf --prompt-lengths 0 --gen-tokens 32 --reps 2 --json > tg32.$isa.$i.json 2>tg32.$isa.$i.err
  echo "$isa $i $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(r['test'], round(r['tokens_per_s'],2), round(r.get('tokens_per_s_std',0),2)) for r in d['results']], d.get('backend'))" tg32.$isa.$i.json)"
done; done
echo done
