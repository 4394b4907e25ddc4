#!/usr/bin/env python3
"""Functions in src/ longer than 80 lines (brace-matched fn bodies; #[cfg(test)] modules
skipped), longest first, then their count: the measure the layering test holds to.

    python3 scripts/long_functions.py
"""
import re,sys,os
res=[]
for root,_,files in os.walk('src'):
    for f in files:
        if not f.endswith('.rs'): continue
        p=os.path.join(root,f)
        lines=open(p).read().split('\n')
        i=0
        in_test=False
        while i<len(lines):
            l=lines[i]
            if re.match(r'\s*#\[cfg\(test\)\]',l): in_test=True
            m=re.match(r'\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)',l)
            if m and not in_test:
                # find opening brace
                j=i; depth=0; started=False
                while j<len(lines):
                    for ch in lines[j]:
                        if ch=='{': depth+=1; started=True
                        elif ch=='}': depth-=1
                    if started and depth==0: break
                    if not started and lines[j].rstrip().endswith(';'): break
                    j+=1
                n=j-i+1
                if started and n>80: res.append((n,p,m.group(6)))
                i=j+1 if started else i+1
                continue
            i+=1
res.sort(reverse=True)
for r in res: print(*r)
print(f"{len(res)} functions over 80 lines")
