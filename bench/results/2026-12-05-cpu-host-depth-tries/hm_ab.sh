export THINTENSOR_HOME=/tmp/rand1b/home
cd /tmp/vab
for i in 1 2; do for hm in "" 1; do
  TT_HM=$hm ./thintensor.hm -q bench /tmp/rand1b/r.thin --device host --threads 2 --profile max-max-perf --prompt-lengths 0 --depths 2048 --context 2200 --gen-tokens 32 --reps 1 --json > hm.d2k.${hm:-0}.$i.json 2>hm.d2k.${hm:-0}.$i.err
  echo "hm=${hm:-0} $i $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(r['test'], round(r['tokens_per_s'],2)) for r in d['results']])" hm.d2k.${hm:-0}.$i.json)"
done; done
echo done
