# Reset entry. The boot ROM has loaded the image and jumped here with every
# register 0; this sets up the stack and hands over to nicemu_start
# (startup.cpp), which clears .bss, runs constructors, main and exit.

        .section .text.start, "ax", @progbits
        .set    noreorder
        .globl  _start
        .type   _start, @function
_start:
        la      $sp, _stack_top         # top of data memory (linker script)
        move    $fp, $zero              # ends the frame chain for backtraces
        jal     nicemu_start
        nop
1:      b       1b                      # not reached: nicemu_start never returns
        nop
        .size   _start, . - _start
