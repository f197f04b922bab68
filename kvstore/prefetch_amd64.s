#include "textflag.h"

// func prefetch(ents []*kent)
TEXT ·prefetch(SB), NOSPLIT, $0-24
	MOVQ	ents_base+0(FP), SI
	MOVQ	ents_len+8(FP), CX
	TESTQ	CX, CX
	JZ	done
loop:
	MOVQ	(SI), AX
	PREFETCHT0	(AX)
	PREFETCHT0	47(AX) // an entry of 48 bytes may straddle two cache lines
	ADDQ	$8, SI
	DECQ	CX
	JNZ	loop
done:
	RET
