#include "textflag.h"

// func prefetch48(ptrs unsafe.Pointer, n int)
TEXT ·prefetch48(SB), NOSPLIT, $0-16
	MOVQ	ptrs+0(FP), SI
	MOVQ	n+8(FP), CX
	TESTQ	CX, CX
	JZ	done
loop:
	MOVQ	(SI), AX
	PREFETCHT0	(AX)
	PREFETCHT0	47(AX) // 48 bytes may straddle two cache lines
	ADDQ	$8, SI
	DECQ	CX
	JNZ	loop
done:
	RET
